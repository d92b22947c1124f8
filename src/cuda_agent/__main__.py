from cuda_agent.cli.entry import main

if __name__ == "__main__":
    main()
